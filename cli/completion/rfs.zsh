# Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause
# zsh completion for the rfs command: the bash completion through zsh's bashcompinit.
# Install: `source /usr/share/bash-completion/completions/rfs.zsh` from ~/.zshrc
# (cmake --install puts this file beside rfs.bash), or source it from the source tree.
autoload -U +X compinit && compinit -u
autoload -U +X bashcompinit && bashcompinit
source "${0:A:h}/rfs.bash" 2>/dev/null || source "${0:A:h}/rfs"
