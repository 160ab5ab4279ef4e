from .builder import main

raise SystemExit(main())
