#!/usr/bin/env python3
"""Checks that docs/reference/*.md covers every public name of canopy's headers.

Usage: check_reference.py SOURCE_ROOT [--list]    (--list prints every public name and its header)

Public names are what a user can call or name: functions, classes/structs/unions, enums, type
aliases, concepts and namespace-scope variables (inline constexpr options such as `argnums`)
declared directly in a public namespace -- `canopy` or one of its sub-namespaces (`canopy::random`,
`canopy::nn`, `canopy::optim`) but never a `detail` namespace -- plus the `CANOPY_*` macros the
headers define (and do not #undef). Class members are covered by their class. Names starting with
an underscore are skipped.

The headers scanned are the ones a user includes: <layer>/include/canopy/**.hpp for the pytree,
random, transforms and train layers, and the installed headers of the kernels layer
(kernels/include/canopy/dtype.hpp, shape.hpp, precision.hpp and random/threefry.hpp). kernels/include/canopy/kernels/ is the kernel
layer's own interface to the primitives: kernels/meson.build does not install it.

A name counts as documented when it appears in code (an inline `code span` or a fenced block)
somewhere in docs/reference/*.md: a name of `canopy` as itself (`tree_map`, or qualified,
`canopy::tree_map`), a name of a sub-namespace with its namespace (`random::normal`, `nn::relu`,
`optim::adam`), so that `optim::Trace` does not stand in for `canopy::Trace`.

The reverse is checked too: a heading that is one code span (### `tree_map`, ### `random::split`,
### `TreeDef::leaf_paths`) must name a public name (or a member of a public class), so that a page
does not keep documenting a function that was renamed or removed.

The scan is a tokenizer with brace tracking, not a C++ parser: it strips comments, strings and
preprocessor lines, follows `namespace` blocks (skipping `detail` ones and class and function
bodies) and reads each namespace-scope declaration's name from its tokens.

And numpy.md's "Coverage of jax.numpy" table is checked against the headers: each row names a
jax.numpy function (once, in order) and either canopy's spelling of it, as the row's first code
span, which must be a public name (or `Class::member` of a public class), or "not provided", which
must not be said of a name canopy declares.

Exit status 0 when everything is covered, 1 with the missing names and their headers otherwise.
"""

import re
import sys
import time
from pathlib import Path

# Names that are public by their namespace but internal by intent, as "canopy::name" or
# "canopy::optim::name", each with the reason. Keep it short: a name a user can reach belongs in the
# reference. Empty today: the extension points of core/ (PrimitiveInfo, Trace, Program, bind, ...)
# are documented in core.md, and the implementation macros CANOPY_INLINE(_LAMBDA) in pytree.md.
ALLOWLIST = {}

LAYER_GLOBS = [
    ("pytree/include/canopy", "**/*.hpp"),
    ("random/include/canopy", "**/*.hpp"),
    ("transforms/include/canopy", "**/*.hpp"),
    ("train/include/canopy", "**/*.hpp"),
    ("kernels/include/canopy", "*.hpp"),  # dtype.hpp and shape.hpp: the installed ones
    ("kernels/include/canopy", "random/*.hpp"),  # the threefry2x32 core, installed with them
]

KEYWORDS = set(
    """alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
    char32_t class compl concept const consteval constexpr constinit const_cast continue co_await
    co_return co_yield decltype default delete do double dynamic_cast else enum explicit export
    extern false float for friend goto if inline int long mutable namespace new noexcept not
    not_eq nullptr operator or or_eq private protected public register reinterpret_cast requires
    return short signed sizeof static static_assert static_cast struct switch template this
    thread_local throw true try typedef typeid typename union unsigned using virtual void volatile
    wchar_t while xor xor_eq final override""".split()
)
# Keywords after which a '(' opens an operand, not a parameter list.
PAREN_KEYWORDS = {"requires", "decltype", "noexcept", "alignas", "alignof", "sizeof", "static_assert",
                  "explicit", "throw", "typeid", "__attribute__", "return", "if", "while", "for", "switch"}

# Comments, string and character literals, and pp-numbers (so a digit separator, 100'000, is not
# taken for a character literal).
LEXICAL = re.compile(
    r"""(?P<comment>//[^\n]*|/\*.*?\*/)"""
    r"""|(?P<raw>R"(?P<delim>[^(\s]*)\(.*?\)(?P=delim)")"""
    r"""|(?P<string>"(?:\\.|[^"\\\n])*")"""
    r"""|(?P<number>\b\d[\w'.]*)"""
    r"""|(?P<char>'(?:\\.|[^'\\\n])*')""",
    re.S,
)
TOKEN = re.compile(r"[A-Za-z_]\w*|::|->|\.\.\.|&&|\|\||<=|>=|==|!=|\d[\w'.]*|\"\"|''|\S")
DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)(\()?")
UNDEF = re.compile(r"^\s*#\s*undef\s+([A-Za-z_]\w*)")


def strip_lexical(text):
    def repl(m):
        if m.group("comment"):
            return re.sub(r"[^\n]", " ", m.group(0))  # keep line structure
        if m.group("raw") or m.group("string"):
            return '""'
        if m.group("char"):
            return "''"
        return m.group(0)

    return LEXICAL.sub(repl, text)


def split_preprocessor(text):
    """Removes preprocessor lines; returns (code, macros defined {name: function_like}, undefined)."""
    code, defined, undefined = [], {}, set()
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("#"):
            directive = line
            while directive.endswith("\\") and i + 1 < len(lines):
                i += 1
                directive = directive[:-1] + " " + lines[i]
            if m := DEFINE.match(directive):
                defined[m.group(1)] = bool(m.group(2))
            elif m := UNDEF.match(directive):
                undefined.add(m.group(1))
            code.append("")
        else:
            code.append(line)
        i += 1
    return "\n".join(code), defined, undefined


def skip_balanced(toks, i, open_, close):
    """toks[i] == open_; returns the index after its matching close (parentheses shield angles)."""
    depth, paren = 0, 0
    n = len(toks)
    while i < n:
        t = toks[i]
        if open_ == "<" and t in "([{":
            paren += 1
        elif open_ == "<" and t in ")]}":
            paren -= 1
        elif paren == 0 or open_ != "<":
            if t == open_:
                depth += 1
            elif t == close:
                depth -= 1
                if depth == 0:
                    return i + 1
        i += 1
    return n


def strip_prefix(toks):
    """Drops leading `template <...>`, attributes and `export` from a declaration's tokens."""
    i = 0
    while i < len(toks):
        t = toks[i]
        if t == "template":
            i = skip_balanced(toks, i + 1, "<", ">") if i + 1 < len(toks) and toks[i + 1] == "<" else i + 1
        elif t == "[" and i + 1 < len(toks) and toks[i + 1] == "[":
            i = skip_balanced(toks, i, "[", "]")
        elif t in ("export", "extern") and not (i + 1 < len(toks) and toks[i + 1] == '""'):
            i += 1
        else:
            break
    return toks[i:]


def is_ident(t):
    return bool(re.match(r"[A-Za-z_]\w*$", t)) and t not in KEYWORDS


def declared_name(head):
    """(kind, name) a namespace-scope declaration introduces; None for operators, using-directives
    and -declarations, static_asserts and qualified (out-of-line) definitions. A deduction guide
    yields its class template's name."""
    toks = strip_prefix(head)
    if not toks:
        return None
    first = toks[0]
    if first in ("static_assert", "friend"):
        return None
    if first == "using":
        if len(toks) >= 3 and is_ident(toks[1]) and toks[2] == "=":
            return ("alias", toks[1])
        return None  # using-directive or using-declaration
    if first == "typedef":
        idents = [t for t in toks if is_ident(t)]
        return ("alias", idents[-1]) if idents else None
    if first in ("class", "struct", "union", "enum"):
        j = 1
        if first == "enum" and j < len(toks) and toks[j] in ("class", "struct"):
            j += 1
        while j < len(toks) and toks[j] in ("[", "alignas"):
            j = skip_balanced(toks, j, "[", "]") if toks[j] == "[" else skip_balanced(toks, j + 1, "(", ")")
        if j < len(toks) and is_ident(toks[j]):
            if j + 1 < len(toks) and toks[j + 1] == "::":
                return None  # a specialisation of another namespace's template (std::hash<...>)
            return ("enum" if first == "enum" else "class", toks[j])
        return None  # anonymous
    if "concept" in toks[:2]:
        k = toks.index("concept")
        return ("concept", toks[k + 1]) if k + 1 < len(toks) else None
    last, qualified = None, False
    i = 0
    while i < len(toks):
        t = toks[i]
        if t == "operator":
            return None
        if t == "(":
            if last is not None and i > 0 and toks[i - 1] == last:
                return None if qualified else ("function", last)
            i = skip_balanced(toks, i, "(", ")")
            continue
        if t == "<" and i > 0 and (is_ident(toks[i - 1]) or toks[i - 1] in KEYWORDS - {"requires"}):
            i = skip_balanced(toks, i, "<", ">")
            continue
        if t == "[" and i + 1 < len(toks) and toks[i + 1] == "[":
            i = skip_balanced(toks, i, "[", "]")
            continue
        if t in ("=", "{"):
            break
        if is_ident(t):
            last, qualified = t, i > 0 and toks[i - 1] == "::"
        i += 1
    if last is None or qualified:
        return None
    return ("variable", last)


def scan_header(path, macros_function_like):
    """Public (namespace, name, kind, is_definition) declarations of one header."""
    text = strip_lexical(path.read_text(encoding="utf-8"))
    code, _, _ = split_preprocessor(text)
    toks = TOKEN.findall(code)
    # Drop macro invocations so that they do not merge into the next declaration.
    cleaned, i = [], 0
    while i < len(toks):
        t = toks[i]
        if t in macros_function_like:
            i += 1
            if macros_function_like[t] and i < len(toks) and toks[i] == "(":
                i = skip_balanced(toks, i, "(", ")")
            continue
        cleaned.append(t)
        i += 1
    toks = cleaned

    found = []
    stack = []  # ("ns", path tuple, public) | ("class",) | ("other",)
    head, paren = [], 0

    def in_public_namespace():
        return bool(stack) and stack[-1][0] == "ns" and stack[-1][2]

    def record(decl, definition):
        if decl and in_public_namespace() and not decl[1].startswith("_"):
            found.append(("::".join(stack[-1][1]), decl[1], decl[0], definition))

    i = 0
    while i < len(toks):
        t = toks[i]
        if paren > 0 or t in "()":
            paren += 1 if t == "(" else -1 if t == ")" else 0
            head.append(t)
        elif t == "{":
            stripped = strip_prefix(head)
            if stripped[:1] == ["namespace"] or stripped[:2] == ["inline", "namespace"]:
                names = [x for x in stripped if x not in ("inline", "namespace", "::")]
                parent = stack[-1][1] if stack and stack[-1][0] == "ns" else ()
                path_ = parent + (tuple(names) if names else ("(anonymous)",))
                public = (path_[0] == "canopy" and all(c != "detail" and not c.startswith("_") for c in path_)
                          and "(anonymous)" not in path_ and (not stack or stack[-1][0] == "ns"))
                stack.append(("ns", path_, public))
                head = []
            elif len(head) >= 1 and (head[-1] == "requires" or
                                     (head[-1] == ")" and _paren_opened_by(head, "requires"))):
                # a requires-expression's body belongs to the declaration's head
                j = skip_balanced(toks, i, "{", "}")
                head.extend(toks[i:j])
                i = j
                continue
            else:
                decl = declared_name(head)
                record(decl, True)
                stack.append(("class",) if decl and decl[0] == "class" else ("other",))
                head = []
        elif t == "}":
            if stack:
                stack.pop()
            head = []
        elif t == ";":
            decl = declared_name(head)
            record(decl, decl is not None and decl[0] != "class")  # `class X;` only declares X
            head = []
        else:
            head.append(t)
        i += 1
    return found


def _paren_opened_by(head, keyword):
    """Whether the parenthesised group ending head is preceded by `keyword`."""
    depth = 0
    for k in range(len(head) - 1, -1, -1):
        if head[k] == ")":
            depth += 1
        elif head[k] == "(":
            depth -= 1
            if depth == 0:
                return k > 0 and head[k - 1] == keyword
    return False


def public_names(root):
    headers = []
    for base, pattern in LAYER_GLOBS:
        headers += sorted((root / base).glob(pattern))
    headers = [h for h in headers if "detail" not in h.relative_to(root).parts]
    # Macros first: every header's CANOPY_* definitions (object-like or function-like), minus the
    # ones a header #undefs again (helpers local to that header).
    macros, macro_home, undefined = {}, {}, set()
    texts = {}
    for h in headers:
        texts[h] = strip_lexical(h.read_text(encoding="utf-8"))
        _, defined, undef = split_preprocessor(texts[h])
        for name, fn in defined.items():
            macros[name] = fn
            macro_home.setdefault(name, h)
        undefined |= undef
    names = {}  # qualified key -> (header, kind)
    for name, h in macro_home.items():
        if name.startswith("CANOPY_") and name not in undefined:
            names[name] = (h, "macro")
    forward = set()  # names seen so far only in forward declarations (`struct Program;`)
    for h in headers:
        for ns, name, kind, definition in scan_header(h, macros):
            key = name if ns == "canopy" else ns[len("canopy::"):] + "::" + name
            if key not in names or (key in forward and definition):
                names[key] = (h, kind)  # report the header that defines it
                forward.discard(key)
                if not definition:
                    forward.add(key)
    return names, headers


CODE_CHAIN = re.compile(r"[A-Za-z_]\w*(?:::[A-Za-z_~]\w*)*")
INLINE_CODE = re.compile(r"(`+)(.+?)\1", re.S)


def documented_chains(pages, sub_namespaces):
    """Every identifier chain in the pages' code, with the suffixes that stay meaningful."""
    chains = set()
    headings = []  # (page, line number, name) of each heading that is one code span
    for page in pages:
        text = page.read_text(encoding="utf-8")
        code_parts, prose, fenced = [], [], False
        for lineno, line in enumerate(text.split("\n"), 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            (code_parts if fenced else prose).append(line)
            m = None if fenced else re.match(r"#{2,4} `([^`]+)`\s*$", line)
            if m:
                headings.append((page, lineno, m.group(1)))
        joined = "\n".join(prose)
        code_parts += [m.group(2) for m in INLINE_CODE.finditer(joined)]
        for part in code_parts:
            for chain in CODE_CHAIN.findall(part):
                comps = chain.split("::")
                if comps[0] == "canopy":
                    comps = comps[1:]
                if not comps:
                    continue
                chains.add("::".join(comps))
                # `canopy::random::split` documents random::split; `optim::Trace` does not document Trace
                for k in range(1, len(comps)):
                    if comps[k - 1] not in sub_namespaces:
                        chains.add("::".join(comps[k:]))
    return chains, headings


COVERAGE_HEADING = "## Coverage of jax.numpy"
COVERAGE_ROW = re.compile(r"^\| `(\w+)` \| (.*) \|\s*$")


def class_declares(root, header, cls, member):
    """Whether class/struct `cls` in `header` declares a function `member` in its body."""
    text = strip_lexical((root / header).read_text(encoding="utf-8"))
    m = re.search(r"\b(?:class|struct)\s+" + re.escape(cls) + r"\b[^;{]*\{", text)
    if not m:
        return False
    depth, i = 1, m.end()
    while i < len(text) and depth:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return re.search(r"\b" + re.escape(member) + r"\s*\(", text[m.end():i]) is not None


def check_numpy_coverage(root, names):
    """Problems with numpy.md's table of jax.numpy's functions (an empty list when it holds)."""
    page = root / "docs" / "reference" / "numpy.md"
    lines = page.read_text(encoding="utf-8").split("\n")
    if COVERAGE_HEADING not in lines:
        return [f"  {page.relative_to(root)}: no '{COVERAGE_HEADING}' section"]
    start = lines.index(COVERAGE_HEADING)
    problems, seen, previous = [], set(), ""
    for lineno, line in enumerate(lines[start + 1:], start + 2):
        if line.startswith("## "):
            break
        m = COVERAGE_ROW.match(line)
        if not m:
            continue
        jnp_name, cell = m.group(1), m.group(2).strip()
        where = f"  {page.relative_to(root)}:{lineno}: jnp.{jnp_name}"
        if jnp_name in seen:
            problems.append(f"{where} is listed twice")
        elif jnp_name < previous:
            problems.append(f"{where} is out of alphabetical order")
        seen.add(jnp_name)
        previous = jnp_name
        if cell.startswith("not provided"):
            if jnp_name in names:
                problems.append(f"{where} says 'not provided' but canopy declares {jnp_name}")
            continue
        span = INLINE_CODE.match(cell)
        chain = CODE_CHAIN.fullmatch(span.group(2).strip()) if span else None
        if not chain:
            problems.append(f"{where}: the cell starts with neither 'not provided' nor canopy's spelling in a code span")
            continue
        comps = chain.group(0).split("::")
        if comps[0] == "canopy":
            comps = comps[1:]
        key = "::".join(comps)
        if key in names:
            continue
        owner = "::".join(comps[:-1])
        if len(comps) >= 2 and owner in names and names[owner][1] == "class" and \
                class_declares(root, names[owner][0], comps[-2], comps[-1]):
            continue
        problems.append(f"{where}: `{key}` is not declared in canopy's headers")
    if not seen:
        problems.append(f"  {page.relative_to(root)}: the '{COVERAGE_HEADING}' section has no rows")
    return problems


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    start = time.perf_counter()
    root = Path(argv[1]).resolve()
    names, headers = public_names(root)
    if "--list" in argv:
        for key, (h, kind) in sorted(names.items(), key=lambda kv: (str(kv[1][0]), kv[0])):
            print(f"{h.relative_to(root)}: {kind} {key}")
    pages = sorted((root / "docs" / "reference").glob("*.md"))
    if not pages:
        print(f"check_reference: no pages in {root / 'docs' / 'reference'}")
        return 1
    sub_namespaces = {k.split("::")[0] for k in names if "::" in k}  # random, nn, optim
    chains, headings = documented_chains(pages, sub_namespaces)

    missing = []
    for key, (h, kind) in sorted(names.items(), key=lambda kv: (str(kv[1][0]), kv[0])):
        if ("canopy::" + key) in ALLOWLIST:
            continue
        if key not in chains:
            missing.append(f"  {key} ({kind}, {h.relative_to(root)})")

    # Headings that document something that is not (or no longer) there.
    stale = []
    for page, lineno, span in headings:
        m = CODE_CHAIN.fullmatch(span.strip())
        if not m:
            continue  # a file name (`core/jit.hpp`) or an expression, not a declaration's name
        comps = m.group(0).split("::")
        if comps[0] == "canopy":
            comps = comps[1:]
        if not comps or comps[0] in ("std",):
            continue
        # `TreeDef::leaf_paths` is checked as far as `TreeDef`, `nn::initializers::zeros` whole
        # (a namespace nested in a sub-namespace): the longest prefix that is a public name.
        head = comps[0]
        if head in sub_namespaces and len(comps) >= 2:
            prefixes = ("::".join(comps[:j]) for j in range(len(comps), 1, -1))
            head = next((p for p in prefixes if p in names), comps[0] + "::" + comps[1])
        if head not in names:
            stale.append(f"  {page.relative_to(root)}:{lineno}: `{span}` names no public declaration")

    coverage = check_numpy_coverage(root, names)

    elapsed = time.perf_counter() - start
    checked = len(names) - sum(1 for k in names if ("canopy::" + k) in ALLOWLIST)
    print(f"check_reference: {checked} public names from {len(headers)} headers checked against "
          f"{len(pages)} pages ({len(ALLOWLIST)} allowlisted) in {elapsed:.2f} s")
    ok = True
    if missing:
        ok = False
        print(f"check_reference: {len(missing)} public names are not documented in docs/reference/*.md:")
        print("\n".join(missing))
    if stale:
        ok = False
        print(f"check_reference: {len(stale)} reference headings name nothing public:")
        print("\n".join(stale))
    if coverage:
        ok = False
        print(f"check_reference: {len(coverage)} problems in numpy.md's table of jax.numpy's functions:")
        print("\n".join(coverage))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
