"""The scripted model server: an offline, OpenAI-compatible stand-in for an LLM that knows
the SOPs, with seeded error profiles (``sopgym model-server``)."""
