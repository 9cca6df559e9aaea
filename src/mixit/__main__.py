from mixit.cli import entry_point

entry_point()
