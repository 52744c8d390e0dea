"""Small domain packs that prove core mechanisms in tests; not benchmark content."""
