"""The generators of docs/build/doc_figures.py, one module per doc page (or pages of one
subject); ``common`` holds what they all read."""
