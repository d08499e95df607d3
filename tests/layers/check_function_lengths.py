#!/usr/bin/env python3
"""Checks that no function of the library is longer than 80 lines, so that every long piece of
logic reads as named steps. The library is the C++ sources (.cpp, .hpp, .cu, .cuh, .h, .inc)
under pytree/, kernels/, transforms/, random/ and train/; tests/, examples/ and benchmarks/ are
not held to it. Fails naming each function over the limit, its length, file and line.

How a function's length is counted: the number of lines from the line of its body's opening
brace to the line of its closing brace, both included (blank and comment lines inside count).
Before counting, preprocessor lines (with their backslash continuations) are blanked and
comments, string literals (raw ones too) and character literals are removed, keeping every
newline, so that braces inside them are not counted and line numbers stay the source's.

Which braces open a function body: a brace directly inside a namespace, a class body or the file
(not inside another function: a lambda or a local class belongs to its enclosing function), whose
head -- the text since the last ';', '{' or '}' -- holds a '(' and does not end with '=' (an
initialiser). A head starting with `namespace` or `extern "..."` opens a namespace; one starting
with struct/class/union/enum (after any template<...>) and without a '(' before its base list
opens a class body. Everything else (initialiser lists, requires-bodies, blocks inside functions)
is neither. This is a brace counter, not a parser: it is right for this code base's style, and
its counts are the ones docs/architecture.md reports.

Usage: check_function_lengths.py SOURCE_ROOT [--top N]   (--top N lists the N longest functions)
"""
import os
import re
import sys

LIBRARY = ["pytree", "kernels", "transforms", "random", "train"]
SUFFIXES = (".cpp", ".hpp", ".cu", ".cuh", ".h", ".inc")
LIMIT = 80

RAW_STRING = re.compile(r'R"([^()\\\s]{0,16})\(')  # R"delimiter( ... )delimiter"


def blank_preprocessor_lines(text):
    """The text with every preprocessor line (and its continuation lines) made empty."""
    lines = text.split("\n")
    continued = False
    for n, line in enumerate(lines):
        if continued or line.lstrip().startswith("#"):
            continued = line.rstrip().endswith("\\")
            lines[n] = ""
    return "\n".join(lines)


def strip_comments_and_literals(text):
    """The text without comments; string and character literals emptied. Newlines are kept."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("\n" * text.count("\n", i, end))
            i = end
            continue
        raw = RAW_STRING.match(text, i) if c == "R" else None
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            delimiter = ")" + raw.group(1) + '"'
            end = text.find(delimiter, i)
            end = n if end < 0 else end + len(delimiter)
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
            continue
        # A quote after a letter or digit is a digit separator (1'000), not a character literal.
        if c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):
            end = i + 1
            while end < n and text[end] != c:
                end += 2 if text[end] == "\\" else 1
            out.append(c + c)
            i = end + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def brace_kind(head, enclosing):
    """What a '{' opens, from its head and the kind of the block it is in:
    'namespace', 'class', 'function' or 'other'."""
    untemplated = re.sub(r"^(template\s*<[^{;]*?>\s*)", "", head)
    if re.match(r"(inline\s+)?namespace\b", untemplated) or untemplated.startswith('extern "'):
        return "namespace"
    if enclosing not in ("namespace", "class"):
        return "other"
    before_bases = untemplated.split(":")[0]
    if re.match(r"(struct|class|union|enum)\b", untemplated) and "(" not in before_bases:
        return "class"
    if "(" in head and not head.endswith("="):
        return "function"
    return "other"


def function_name(head):
    """The function's name as its head spells it (qualified where it is: BatchTrace::process_custom)."""
    flat = head.replace("\n", " ")
    # The last name followed by a parameter list (which may hold one level of nested parentheses).
    last = re.search(r"([~\w:<>]+)\s*\([^()]*(\([^()]*\)[^()]*)*\)[^()]*$", flat)
    name = last.group(1) if last else flat[-60:]
    # A constructor's initialiser list ends the head: the name is the one before the first '('.
    first = re.match(r".*?([\w:~<>]+)\s*\(", flat)
    if first and re.search(r"\)\s*:\s*\w", flat):
        name = first.group(1)
    return name


def functions(path):
    """(length, name, line) of every function body in the file at `path`."""
    with open(path, errors="replace") as f:
        text = strip_comments_and_literals(blank_preprocessor_lines(f.read()))
    open_blocks = []  # (kind, line of its '{', name) of the blocks enclosing the current position
    head_start = 0
    line = 1
    found = []
    for i, c in enumerate(text):
        if c == "\n":
            line += 1
        elif c == "{":
            head = text[head_start:i].strip()
            enclosing = open_blocks[-1][0] if open_blocks else "namespace"
            kind = brace_kind(head, enclosing)
            open_blocks.append((kind, line, function_name(head) if kind == "function" else ""))
            head_start = i + 1
        elif c == "}":
            if open_blocks:
                kind, start, name = open_blocks.pop()
                if kind == "function":
                    found.append((line - start + 1, name, start))
            head_start = i + 1
        elif c == ";":
            head_start = i + 1
    return found


def library_functions(root):
    """(length, name, path from root, line) of every function in the library under `root`."""
    found = []
    for layer in LIBRARY:
        for folder, _, files in os.walk(os.path.join(root, layer)):
            for name in sorted(files):
                if name.endswith(SUFFIXES):
                    path = os.path.join(folder, name)
                    rel = os.path.relpath(path, root).replace(os.sep, "/")
                    found += [(n, fn, rel, line) for n, fn, line in functions(path)]
    return sorted(found, key=lambda f: (-f[0], f[2], f[3]))


def main(argv):
    if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--top"):
        raise SystemExit(__doc__)
    found = library_functions(argv[1])
    if len(argv) == 4:
        for n, name, path, line in found[: int(argv[3])]:
            print(f"{n:5d}  {name}  {path}:{line}")
        return 0
    too_long = [f for f in found if f[0] > LIMIT]
    for n, name, path, line in too_long:
        print(f"{path}:{line}: {name} is {n} lines long, over the limit of {LIMIT}; split it into named steps")
    print(f"check_function_lengths: {len(found)} functions checked, {len(too_long)} over {LIMIT} lines")
    return 1 if too_long else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
