"""Parley: process entry points and composition roots."""
