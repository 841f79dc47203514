from easyfirst.cli import run

run()
