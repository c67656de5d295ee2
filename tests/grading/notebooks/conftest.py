"""These notebooks are grading fixtures (some loop forever or kill their kernel): nbval must not run them."""
collect_ignore_glob = ["*.ipynb"]
