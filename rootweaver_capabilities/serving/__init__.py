"""The capability behind a port: the shared answerer, the HTTP service and the MCP server.
"""
