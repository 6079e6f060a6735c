"""Emitters: assemble target source text and weights files from the IR."""
