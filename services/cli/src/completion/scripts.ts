/**
 * The completion scripts `boxmaker completion SHELL` prints. Each is a thin
 * caller: it hands the words of the line to `boxmaker __complete -- WORDS…`
 * and offers what comes back, one `value<TAB>description` a line, or file
 * names when the only line is `:files`. What completes to what lives in
 * candidates.ts, read from the same commands help is printed from, so the
 * scripts never go stale and a script made by an older boxmaker still works.
 */
export const SHELLS = ["bash", "zsh", "fish"] as const;
export type Shell = (typeof SHELLS)[number];

const BASH = `# boxmaker completion for bash: source <(boxmaker completion bash)
_boxmaker() {
  local cur=\${COMP_WORDS[COMP_CWORD]} out line
  COMPREPLY=()
  out=$(boxmaker __complete -- "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null) || return 0
  if [[ $out == ":files" ]]; then
    compopt -o filenames 2>/dev/null
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    return 0
  fi
  while IFS= read -r line; do
    [[ -n $line ]] && COMPREPLY+=("\${line%%$'\\t'*}")
  done <<<"$out"
}
complete -F _boxmaker boxmaker
`;

// Loaded either way: sourced (compdef registers it) or as _boxmaker on $fpath (compinit autoloads the file as the function's body).
const ZSH = `#compdef boxmaker
# boxmaker completion for zsh: source <(boxmaker completion zsh), or save it as _boxmaker in a directory on $fpath
_boxmaker() {
  local out line value description
  local -a candidates
  out=$(boxmaker __complete -- "\${(@)words[2,CURRENT]}" 2>/dev/null) || return 1
  if [[ $out == ":files" ]]; then
    _files
    return
  fi
  for line in "\${(@f)out}"; do
    [[ -n $line ]] || continue
    value=\${line%%$'\\t'*}
    description=\${line#*$'\\t'}
    [[ $line == *$'\\t'* ]] || description=
    candidates+=("\${value//:/\\\\:}\${description:+:$description}")
  done
  _describe -t values boxmaker candidates
}
if [[ $funcstack[1] == _boxmaker ]]; then
  _boxmaker "$@"
else
  compdef _boxmaker boxmaker
fi
`;

const FISH = `# boxmaker completion for fish: boxmaker completion fish > ~/.config/fish/completions/boxmaker.fish
function __boxmaker_complete
    set -l words (commandline -opc)
    set -e words[1]
    set -l cur (commandline -ct)
    set -l out (boxmaker __complete -- $words "$cur" 2>/dev/null); or return
    if test "$out" = ":files"
        __fish_complete_path "$cur"
        return
    end
    printf '%s\\n' $out
end
complete -c boxmaker -f -a '(__boxmaker_complete)'
`;

export function completionScript(shell: Shell): string {
  return { bash: BASH, zsh: ZSH, fish: FISH }[shell];
}
