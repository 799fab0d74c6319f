"""Agent memory over the Model Context Protocol: the server (server.py), its HTTP mount (http.py)."""
