from collc.cli import main

main()
