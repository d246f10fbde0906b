dev_top_names_base: 1
