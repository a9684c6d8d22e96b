from graphmem.cli.app import main

main()
