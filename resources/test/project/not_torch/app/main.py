import flask

# import torch (a comment, not an import)
TEXT = "import torch"
