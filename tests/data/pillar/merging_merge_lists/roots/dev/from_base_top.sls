from_base_top: {env: dev}
