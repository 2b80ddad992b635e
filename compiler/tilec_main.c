/* tilec_main.c — the tilec executable: everything is in libtilec. */
int tilec_cli_main(int argc, char **argv);

int main(int argc, char **argv)
{
    return tilec_cli_main(argc, argv);
}
