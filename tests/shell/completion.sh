#!/usr/bin/env bash
# The installed shell completion and man page: `cmake --install` into a scratch prefix puts
# them where bash-completion, zsh, fish and man look; the bash completion is driven as bash
# drives it (COMP_WORDS, COMP_CWORD, then COMPREPLY); the man page renders without a warning
# (man, else groff; neither: skipped, failed when CI=true); zsh and fish, where installed, read
# their files without a syntax error, and fish completes a few command lines.
# Usage: completion.sh BUILD_DIR SCRATCH_DIR
set -uo pipefail
build=$1
scratch=$2
rm -rf "$scratch"
mkdir -p "$scratch"
prefix=$scratch/prefix
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

if ! cmake --install "$build" --prefix "$prefix" >"$scratch/install.log" 2>&1; then
  cat "$scratch/install.log" >&2
  echo "FAIL: cmake --install" >&2
  exit 1
fi
bash_file=$prefix/share/bash-completion/completions/interopbench
zsh_file=$prefix/share/zsh/site-functions/_interopbench
fish_file=$prefix/share/fish/vendor_completions.d/interopbench.fish
man_file=$prefix/share/man/man1/interopbench.1
for f in "$bash_file" "$zsh_file" "$fish_file" "$man_file" "$prefix/bin/interopbench" \
         "$prefix/share/interopbench/plugins/frameworks.json"; do
  [[ -s $f ]] || fail "not installed: ${f#"$prefix"/}"
done

# ---- bash: what COMPREPLY offers for a command line (the last word is the one completed)
# shellcheck source=/dev/null
source "$bash_file" || fail "bash cannot source the completion"
offers() {
  COMP_WORDS=("$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMP_LINE="${COMP_WORDS[*]}"
  COMP_POINT=${#COMP_LINE}
  COMPREPLY=()
  _interopbench
  printf '%s\n' "${COMPREPLY[@]}"
}
# grep reads every offer (no -q): under pipefail a grep that stops at its first match would
# end the writer with SIGPIPE and fail the pipeline when the offers are many (file names).
expect() { # expect WORD -- COMMAND LINE...: WORD is among the offers
  local want=$1
  shift 2
  offers "$@" | grep -xF -- "$want" >/dev/null && return 0
  fail "'$*' does not offer '$want' (offers: $(offers "$@" | tr '\n' ' '))"
  return 1
}
refuse() { # refuse WORD -- COMMAND LINE...: WORD is not among the offers
  local unwanted=$1
  shift 2
  offers "$@" | grep -xF -- "$unwanted" >/dev/null || return 0
  fail "'$*' offers '$unwanted'"
  return 1
}
expect run -- interopbench r
refuse list -- interopbench r
expect compare -- interopbench c
refuse completion -- interopbench c   # hidden commands are not offered
refuse _round -- interopbench _
expect --version -- interopbench --v
expect always -- interopbench --color a          # a global option's value
expect run -- interopbench --color always r       # ... is no command
expect never -- interopbench show --color n
expect quick -- interopbench run --profile ''
expect ci -- interopbench run -p c
expect full -- interopbench run --profile = f  # bash splits --profile=f at '='
expect ci -- interopbench run --profile = ''
expect --profile -- interopbench run --pro
expect --progress -- interopbench run --pro
expect h2d_copy -- interopbench run -s h2d
expect frameworks -- interopbench list --scenario fr  # a shipped plugin, by its manifest
expect host_mem= -- interopbench run -a host_
expect html -- interopbench show r.json -f ''
refuse html -- interopbench list -f ''
expect bmf= -- interopbench run --export b
expect primary -- interopbench run --metrics ''
expect all -- interopbench show x.json --metrics a
expect fleet -- interopbench help f
expect --require-gpu -- interopbench doctor --req
mkdir -p "$scratch/files/reports.d"
touch "$scratch/files/base.json"
(cd "$scratch/files" && expect base.json -- interopbench compare b) || fail "compare does not offer files"
(cd "$scratch/files" && expect reports.d -- interopbench run --storage-dir rep) || fail "--storage-dir does not offer folders"
refuse base.json -- interopbench run --size b

# ---- man: renders without a warning
export MANWIDTH=80 MANPAGER=cat PAGER=cat
if command -v man >/dev/null; then
  man --warnings -l "$man_file" >"$scratch/man.txt" 2>"$scratch/man.err" || fail "man -l failed"
elif command -v groff >/dev/null; then
  groff -man -Tutf8 -ww -P-cbou "$man_file" >"$scratch/man.txt" 2>"$scratch/man.err" || fail "groff failed"
elif [[ ${CI:-} == true ]]; then
  fail "neither man nor groff is installed (.ci/install-deps.sh installs groff-base)"
else
  echo "man page: neither man nor groff is installed: not rendered" >&2
  : >"$scratch/man.err"
  echo "interopbench run --dry-run SCENARIOS h2d_copy EXIT STATUS" >"$scratch/man.txt"
fi
if [[ -s $scratch/man.err ]]; then
  fail "the man page renders with warnings:"
  cat "$scratch/man.err" >&2
fi
for text in "interopbench run" "--dry-run" "SCENARIOS" "h2d_copy" "EXIT STATUS"; do
  grep -qF -- "$text" "$scratch/man.txt" || fail "the rendered man page lacks '$text'"
done

# ---- zsh and fish: syntax only, where installed
if command -v zsh >/dev/null; then
  zsh -n "$zsh_file" || fail "zsh: syntax error in _interopbench"
else
  echo "zsh is not installed: its completion is not checked" >&2
fi
if command -v fish >/dev/null; then
  if fish --no-execute "$fish_file"; then
    # fish completes a command line without a terminal: `complete -C LINE`.
    fish_offers() { fish -N -c "source '$fish_file'; complete -C '$1'" | cut -f1; }
    fish_offers 'interopbench r' | grep -xF run >/dev/null || fail "fish: 'interopbench r' does not offer run"
    fish_offers 'interopbench run --profile ' | grep -xF quick >/dev/null || fail "fish: --profile does not offer quick"
    fish_offers 'interopbench show r.json -f ' | grep -xF html >/dev/null || fail "fish: show -f does not offer html"
  else
    fail "fish: syntax error in interopbench.fish"
  fi
else
  echo "fish is not installed: its completion is not checked" >&2
fi

if ((failures)); then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "shell completion and man page: ok"
