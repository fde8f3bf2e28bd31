"""kopf handlers: the only modules that import kopf. Thin: parse, call the domain, apply."""
