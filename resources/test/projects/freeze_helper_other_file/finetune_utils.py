def freeze(module):
    module.requires_grad = False  # expect: module-flag-attribute-assignment


def set_option(obj, value):
    obj.requires_grad = value  # ok: every caller passes a settings object


def unfreeze(module):
    module.requires_grad_(True)  # ok: the real method
