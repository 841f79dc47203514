"""``python -m easyfirst`` and the ``easyfirst`` command (easyfirst.cli.run). SIGINT and SIGTERM are
caught before the command line's modules are imported, so that an interrupt while they load is
"interrupted" (easyfirst.atomic.Interrupts), not a traceback from inside an import."""

from easyfirst.atomic import INTERRUPTS


def main() -> None:
    INTERRUPTS.install()
    from easyfirst.cli import run

    run()


if __name__ == "__main__":
    main()
