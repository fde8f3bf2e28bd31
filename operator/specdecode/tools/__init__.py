"""Build tools that write files from the code (the CRDs): above every runtime layer.

Why a layer of their own: a tool that writes the repository's files is no part of the
wire schema it reads; kept out of `api`, the schema stays the lowest, file-free layer.
"""
