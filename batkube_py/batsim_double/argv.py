"""Batsim's argv grammar, as docopt-cpp 0.6.3 applies it to Batsim 4.2.1's usage pattern.

Why not the `docopt` / `docopt-ng` PyPI packages: they match the same grammar but fail
differently from docopt-cpp (Batsim's parser): other error texts, usage on stderr and
exit code 1, where docopt-cpp prints its message on stderr, the whole help on stdout
and exits with 255 (`std::exit(-1)`).  The pattern being fixed, what docopt-cpp does
with it comes down to a few rules, implemented here:

* long options may be abbreviated to a unique prefix (`--plat`), take their value as
  `--opt=v` or as the next word (whatever it is, `-q` included); short options stack
  (`-qE`) and take a value glued (`-pfile`) or as the next word;
* an unknown option is not an error by itself: like any word the pattern cannot place
  (a second `-p`, `-q` twice, `--sched-cfg` with `--sched-cfg-file` ...) it makes
  docopt fail with "Unexpected argument: " followed by the *whole* argv, comma-joined;
* with neither `-p` nor `--simgrid-version`, nothing matches: "Arguments did not match
  expected patterns";
* `-h/--help` and `--version` anywhere win over any such mismatch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .usage import OPTIONS, PATTERN_ONLY, Opt

# The order docopt knows long options in: described ones, then those only the pattern names; docopt
# appends the unknown ones it meets in argv (with or without an argument, as first seen).
_LONGS: list[tuple[str, Opt | None]] = [(o.long, o) for o in OPTIONS] + [(n, None) for n in PATTERN_ONLY]
_SHORTS = {o.short: o for o in OPTIONS if o.short}

class DocoptError(Exception):
    """What docopt-cpp reports before printing the help and exiting with 255."""


class HelpRequested(Exception):
    pass


class VersionRequested(Exception):
    pass


@dataclass
class Parsed:
    """Matched argv: option long name -> value (str, bool or list of str) and positionals."""

    values: dict[str, str | bool | list[str]] = field(default_factory=dict)
    positionals: list[str] = field(default_factory=list)
    given: list[str] = field(default_factory=list)  # long names of the options present in argv
    simgrid_version: bool = False

    def __getitem__(self, name: str) -> str | bool | list[str]:
        return self.values[name]

    def text(self, name: str) -> str:
        value = self.values[name]
        assert isinstance(value, str), name
        return value

    def flag(self, name: str) -> bool:
        return bool(self.values.get(name))

    def items(self, name: str) -> list[str]:
        value = self.values.get(name, [])
        return value if isinstance(value, list) else []


@dataclass
class _Tok:
    name: str  # long option name, "" for a positional word, or an unknown option's own spelling
    value: str | bool
    known: bool = True


def _parse_long(words: list[str], i: int, unknown: list[tuple[str, bool]]) -> tuple[_Tok, int]:
    word = words[i]
    name, eq, val = word.partition("=")
    longs = [(n, o, o is not None and o.arg is not None) for n, o in _LONGS]
    longs += [(n, None, a) for n, a in unknown]
    similar = [x for x in longs if x[0] == name]
    if not similar:
        similar = [x for x in longs if x[0].startswith(name)]
    if len(similar) > 1:
        raise DocoptError(f"'{name}' is not a unique prefix: {', '.join(x[0] for x in similar)}")
    if not similar:
        unknown.append((name, bool(eq)))
        return _Tok(name, val if eq else True, known=False), i + 1
    long, opt, has_arg = similar[0]
    known = opt is not None or long in PATTERN_ONLY
    if not has_arg:
        if eq:
            raise DocoptError(f"{long} must not have an argument")
        return _Tok(long, True, known), i + 1
    if eq:
        return _Tok(long, val, known), i + 1
    if i + 1 >= len(words) or words[i + 1] in ("", "--"):
        raise DocoptError(f"{long} requires an argument")
    return _Tok(long, words[i + 1], known), i + 2


def _parse_shorts(words: list[str], i: int) -> tuple[list[_Tok], int]:
    word, out, j = words[i], [], 1
    i += 1
    while j < len(word):
        short = "-" + word[j]
        j += 1
        opt = _SHORTS.get(short)
        if opt is None:
            out.append(_Tok(short, True, known=False))
        elif opt.arg is None:
            out.append(_Tok(opt.long, True))
        elif j < len(word):
            out.append(_Tok(opt.long, word[j:]))
            j = len(word)
        elif i >= len(words) or words[i] in ("", "--"):
            raise DocoptError(f"{short} requires an argument")
        else:
            out.append(_Tok(opt.long, words[i]))
            i += 1
    return out, i


def tokenize(words: list[str]) -> list[_Tok]:
    toks: list[_Tok] = []
    unknown: list[tuple[str, bool]] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":  # docopt keeps the "--" itself as a word
            toks += [_Tok("", w) for w in words[i:]]
            break
        if word.startswith("--"):
            tok, i = _parse_long(words, i, unknown)
            toks.append(tok)
        elif word.startswith("-") and word != "-":
            more, i = _parse_shorts(words, i)
            toks += more
        else:
            toks.append(_Tok("", word))
            i += 1
    return toks


def _match_main(toks: list[_Tok]) -> tuple[Parsed | None, int]:
    """The first usage line; returns (match, number of words left over) or (None, 0) without -p."""
    parsed = Parsed()
    left = 0
    seen: set[str] = set()
    positionals = [t.value for t in toks if t.name == ""]
    for tok in toks:
        if tok.name == "":
            continue
        if not tok.known or tok.name in ("--help", "--version", "--simgrid-version"):
            left += 1
            continue
        opt = next((o for o in OPTIONS if o.long == tok.name), None)
        if opt is not None and opt.repeat:
            parsed.values.setdefault(tok.name, [])
            parsed.values[tok.name].append(str(tok.value))  # type: ignore[union-attr]
        elif tok.name in seen or (tok.name == "--sched-cfg-file" and "--sched-cfg" in seen) or (
                tok.name == "--sched-cfg" and "--sched-cfg-file" in seen):
            left += 1
        else:
            seen.add(tok.name)
            parsed.values[tok.name] = tok.value
        parsed.given.append(tok.name)
    if "--platform" not in seen:
        return None, 0
    pairs = len(positionals) // 2 * 2  # (<cut_workflow_file> <start_time>)...
    parsed.positionals = [str(p) for p in positionals[:pairs]]
    left += len(positionals) - pairs
    for o in OPTIONS:
        parsed.values.setdefault(o.long, [] if o.repeat else o.default)  # type: ignore[arg-type]
    return parsed, left


def parse(argv: list[str]) -> Parsed:
    """docopt-cpp's verdict on argv (Batsim's argv[1:])."""
    toks = tokenize(argv)
    if any(t.name == "--help" for t in toks):
        raise HelpRequested
    if any(t.name == "--version" for t in toks):
        raise VersionRequested
    main, left = _match_main(toks)
    if main is not None and left == 0:
        return main
    if [t.name for t in toks] == ["--simgrid-version"]:
        return Parsed(simgrid_version=True)
    if main is not None or any(t.name == "--simgrid-version" for t in toks):
        raise DocoptError("Unexpected argument: " + ", ".join(argv))
    raise DocoptError("Arguments did not match expected patterns")
