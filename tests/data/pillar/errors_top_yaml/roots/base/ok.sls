ok: 1
