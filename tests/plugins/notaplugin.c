/* notaplugin.c - a loadable module without popc_plugin_entry: a directory
** scan must skip it quietly. */
int notaplugin_answer(void);
int notaplugin_answer(void)
{
    return 42;
}
