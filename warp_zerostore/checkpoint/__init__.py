"""Binomial checkpointing of Warp rollouts (issue 12)."""
