#!py
def run():
    return {
        "py": {
            "id": __grains__["id"],
            "os_family": __grains__.get("os_family", "none"),
            "role": __salt__["grains.get"]("role", "none"),
            "pillar_keys": sorted(__pillar__.keys()),
            "opts_id": __opts__["id"],
            "sls": __sls__,
            "saltenv": __env__ if "__env__" in globals() else "no __env__",
            "tuple": (1, 2),
            "set_len": len({1, 2, 2}),
        }
    }
