import importlib


def import_architecture(package, name):
    """The model module is chosen on the command line and imported at run time."""
    return importlib.import_module(package + "." + name)
