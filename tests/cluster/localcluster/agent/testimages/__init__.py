"""Stand-ins for small public test images (agnhost netexec, pause), stdlib only."""
