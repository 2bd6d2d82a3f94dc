"""Experiment definitions behind the notebooks: grids per tier, runners, claims."""
