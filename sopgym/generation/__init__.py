"""The benchmark generation pipeline: ``sopgym generate`` turns a business task into a domain
pack, stage by stage, each stage's artifact gated by checks that run code (docs/generation.md)."""
