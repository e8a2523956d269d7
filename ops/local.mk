# op plugins: one fragment per family, on one op utility library
include %reldir%/util.mk
include %reldir%/math.mk
include %reldir%/nn.mk
include %reldir%/extend.mk
