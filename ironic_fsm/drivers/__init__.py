"""Built-in hardware types: ``fake-hardware``, ``ipmi`` and ``redfish``."""
