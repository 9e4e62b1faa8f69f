"""One NKI rule per module. Importing `evidence.static.framework.load_rules` imports them all."""
