# tools/: command-line programs.
