"""The state ledger: files, commands, errors and identifiers, extracted mechanically."""
