"""``python -m review_loop``: the same as the ``review-loop`` console script."""

from review_loop.orchestrator.cli import main

if __name__ == "__main__":
    main()
