
*€x€€€pBhalf