"""Shadow traffic: sources behind the `ShadowTraffic` Protocol and the manager that runs them."""
