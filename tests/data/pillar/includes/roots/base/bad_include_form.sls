include: common
bad_include_form: True
