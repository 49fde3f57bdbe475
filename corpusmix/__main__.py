import sys

from corpusmix.cli import main

sys.exit(main())
