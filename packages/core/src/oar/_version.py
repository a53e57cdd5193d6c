"""The version of oar-core, readable from every layer (file metadata, the plugin listing)."""

__version__ = "0.1.0"
