"""README.md shows code from compiled examples: each region of an example between
`// README:begin` and `// README:end` (its indentation removed) must appear verbatim in
README.md, so README's code is code that compiles and runs in the test suite.
Usage: readme_snippets.py README.md example.cpp..."""
import sys
import textwrap

readme = open(sys.argv[1]).read()
checked = 0
for path in sys.argv[2:]:
    text = open(path).read()
    start = 0
    while (b := text.find("// README:begin\n", start)) >= 0:
        e = text.index("// README:end", b)
        region = textwrap.dedent(text[b + len("// README:begin\n"):text.rindex("\n", b, e) + 1])
        if region not in readme:
            sys.exit(f"{path}: the region at offset {b} is not in README.md verbatim; copy it over:\n{region}")
        checked += 1
        start = e
if checked == 0:
    sys.exit("no README regions found")
print(f"{checked} README region(s) match their examples")
