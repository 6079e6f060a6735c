"""IR -> IR passes, each small and testable alone; ``pipeline`` orders them per target."""
