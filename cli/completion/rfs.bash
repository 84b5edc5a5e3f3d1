# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
# bash completion for the rfs command.  Install: copy to
# /usr/share/bash-completion/completions/rfs (cmake --install does), or `source` it.
# Completes commands, each command's options, local paths, and remote paths: a word that
# starts with rfs: or rfs:// and names a directory on a reachable server is completed from
# the server's listing (one `rfs ls`, 3 s at most).

_rfs_commands="put get cp cat ls stat du df mv rm chmod mkdir ping recover manifest share token run help"

_rfs_options() {
    local common="--token-file --cap --timeout -q --quiet -v --verbose --debug -h --help"
    case "$1" in
        put) echo "$common --streams --no-progress --resume --verify -n --no-clobber -f --force --raw --servers --stripe-size --stripe-count --replicas" ;;
        get) echo "$common --streams --no-progress --resume --verify -n --no-clobber -f --force --raw" ;;
        cp) echo "$common --streams --no-progress --resume --verify -n --no-clobber -f --force -r --recursive --servers --stripe-size --stripe-count --replicas" ;;
        cat) echo "$common --verify --raw" ;;
        ls) echo "$common --json -H --human-readable -l" ;;
        stat) echo "$common --json" ;;
        du) echo "$common --json -H --human-readable -s --summarize" ;;
        df) echo "$common --json -H --human-readable" ;;
        mv) echo "$common -n --no-clobber -f --force" ;;
        mkdir) echo "$common -p --parents" ;;
        ping) echo "$common -c --count" ;;
        recover) echo "$common --to --force" ;;
        manifest) echo "$common --json show ls augment trim refresh compact --server --column --replica --force --extend" ;;
        share) echo "$common --read --write --manage --expires --revoke --lease" ;;
        *) echo "$common" ;;
    esac
}

# Remote entries under the directory part of $1 ("rfs:h:p:/dir/pre" -> "rfs:h:p:/dir/NAME").
_rfs_remote() {
    local cur="$1" dir
    case "$cur" in
        */*) dir="${cur%/*}/" ;;
        rfs://*) dir="$cur/" ;;
        *) dir="$cur:/" ;;
    esac
    local line type name
    while IFS= read -r line; do
        type="${line:0:1}"
        # "T SIZE YYYY-MM-DD HH:MM:SS NAME": the name is what follows the fourth field.
        name=$(printf '%s\n' "$line" | sed -E 's/^. +[0-9]+  [0-9-]+ [0-9:]+  //')
        [ "$type" = d ] && name="$name/"
        printf '%s\n' "$dir$name"
    done < <(timeout 3 rfs ls "$dir" 2>/dev/null)
}

_rfs() {
    local cur="${COMP_WORDS[COMP_CWORD]}" cmd="" i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "${COMP_WORDS[i]}" in
            --token-file|--timeout|--streams|--count|-c|--to) ((i++)) ;;
            -*) ;;
            *) cmd="${COMP_WORDS[i]}"; break ;;
        esac
    done
    local prev="${COMP_WORDS[COMP_CWORD-1]}"
    case "$prev" in
        --token-file) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --timeout|--streams|--count|-c) COMPREPLY=(); return ;;
    esac
    if [ -z "$cmd" ]; then
        if [[ "$cur" == -* ]]; then
            COMPREPLY=($(compgen -W "$(_rfs_options "") --version" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$_rfs_commands" -- "$cur"))
        fi
        return
    fi
    case "$cmd" in
        help) COMPREPLY=($(compgen -W "$_rfs_commands" -- "$cur")); return ;;
        run) COMPREPLY=($(compgen -c -- "$cur")); return ;;
        token) COMPREPLY=(); return ;;
    esac
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$(_rfs_options "$cmd")" -- "$cur"))
    elif [[ "$cur" == rfs:* ]]; then
        local IFS=$'\n'
        COMPREPLY=($(compgen -W "$(_rfs_remote "$cur")" -- "$cur"))
        compopt -o nospace 2>/dev/null
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -F _rfs rfs
