from easyfirst.cli import main

main()
