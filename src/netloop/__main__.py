import sys

try:
    from .cli import main
except ModuleNotFoundError as err:   # the CLI itself needs PyYAML (experiment files are YAML)
    if err.name != "yaml":
        raise
    print("netloop: needs PyYAML (missing: yaml); install it (Debian: apt-get install python3-yaml) "
          "or run 'make build'", file=sys.stderr)
    sys.exit(2)

sys.exit(main())
