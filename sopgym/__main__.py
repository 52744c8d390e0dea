from sopgym.cli import main

main()
