Speichern Sie den Arbeitsbereich bevor Sie die Anwendung schließen .
Öffnen Sie das Datei Menü und wählen Export .
Die Ebene ist ausgeblendet .
Klicken Sie OK zu schließen die Dialogfeld .
Geben Sie einen Namen für das neue Symbol .
Schriftarten fehlen .
