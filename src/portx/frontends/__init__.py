"""Frontends: load a source model, walk it, record scopes, call the ops' import rules."""
