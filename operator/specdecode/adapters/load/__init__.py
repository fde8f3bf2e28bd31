"""Shadow-load pods: render them, and read what they measured."""
