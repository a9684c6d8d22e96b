"""The store's owner process and its local socket, and the client side used by the CLI and stdio."""
