"""What the banking scenario packs share: a scenario is data, this package makes it a pack."""
